import { LabIcon } from '@jupyterlab/ui-components';

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M13 2 4 14h6l-1 8 9-12h-6z"/>
</svg>`;

export const jitIcon = new LabIcon({ name: 'jitmagic:jit', svgstr: svg });
